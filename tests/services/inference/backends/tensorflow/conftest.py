# The backend module first: it loads Triton before TensorFlow (see its comment), and the
# test module imports keras, which would otherwise load TensorFlow first.
import services.inference.backends.tensorflow.backend  # noqa: F401
