"""codectalk Python tools: the codes-stream client that decodes with the exported codec programs
(client.py, docs/CODES_WIRE.md), and the binding of the C library installed by
`pip install ./python`: Model, Voice (a cloned voice), VoiceInfo and CodectalkError (model.py)
over libcodectalk's public API through ctypes (_lib.py). Those load the library on first use,
so client.py still imports from the source tree, where there is no built library."""

__all__ = ["Model", "Voice", "VoiceInfo", "CodectalkError"]


def __getattr__(name):
    if name in __all__:
        from . import model
        return getattr(model, name)
    if name == "__version__":  # the linked library's version (ct_version())
        from . import _lib
        return _lib.load().ct_version().decode()
    raise AttributeError("module 'codectalk' has no attribute %r" % (name,))
