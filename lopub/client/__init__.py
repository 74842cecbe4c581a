"""What runs on a user's device: Bloom encoding and randomized response."""
from lopub.client.bloom import bloom_encode, bloom_encode_packed
from lopub.client.encode import Client, encode
from lopub.client.randomize import bernoulli_words, flip_bits, flip_packed

__all__ = ["Client", "bernoulli_words", "bloom_encode", "bloom_encode_packed", "encode", "flip_bits", "flip_packed"]
