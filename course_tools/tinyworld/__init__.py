"""The tiny world's maintainer side: the trainer of the tiny base and its adapters, the grammar and phrasings it
trains on, the quality gate, a demo. The tasks and checkers the labs use are in ``course_utils.tinyworld``."""
