"""What serves a project's predictions, below the live state that holds it (:mod:`app.context`)
and the use cases that change it (:mod:`app.services`): the rules that pick the encoder a
version serves with. Nothing here holds state or takes a lock.

- :mod:`app.serving.int8`: a version serves its int8 ONNX copy when the copy passed parity and
  the project allows it, else the fp32 encoder; what a version records and shows is the
  measurement of the encoder that serves it.
"""
