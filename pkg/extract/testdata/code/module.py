import os, sys as system
from .util import (a,
    b as c)
# def commented(): pass
class Thing:
    def method(self, x):
        pass
def top(a, b=1):
    pass
_private = 1
VALUE = 2
