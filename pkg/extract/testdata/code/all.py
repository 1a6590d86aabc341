"""Docstring."""
import json
__all__ = ["public_one", 'Two']

def public_one(): pass
async def other(x, *args, **kw): pass
class Two(Base):
    class Inner:
        def deep(self): pass
    def method(self): pass
