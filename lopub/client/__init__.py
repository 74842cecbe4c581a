"""What runs on a user's device: Bloom encoding and randomized response."""
from .bloom import bloom_encode, bloom_encode_packed
from .encode import Client, encode
from .randomize import bernoulli_words, flip_bits, flip_packed

__all__ = ["Client", "bloom_encode", "bloom_encode_packed", "encode", "flip_bits"]
