"""Horovod's Compressor base class, shared by hvd.torch and hvd.tensorflow: compress(tensor)
returns (tensor to send, context), and decompress(tensor, context) undoes it. Subclass it
for a compression of your own."""


class Compressor:
    @staticmethod
    def compress(tensor):
        """Returns (tensor to send, context for decompress)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError
