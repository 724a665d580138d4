"""(filled in by issue 36)"""
__all__ = []
