"""Reading and rewriting the program store's entries, as a faulty writer or a forger would."""

from aejax.linker.program import signing
from aejax.linker.program.saved_programs import MAGIC


def signed_parts(path):
    """The signature, header line and payload of the entry at ``path``."""
    claimed, _, signed = path.read_bytes().removeprefix(MAGIC).partition(b"\n")
    line, _, payload = signed.partition(b"\n")
    return claimed, line, payload


def rewritten(path, line, payload, sign):
    """Write the entry of header ``line`` and ``payload`` at ``path``, signed by ``sign(signed bytes)``."""
    signed = line + b"\n" + payload
    path.write_bytes(MAGIC + sign(signed) + b"\n" + signed)


def with_key(signed):
    """Signed as aejax signs: a writer with this user's key (an old or faulty one)."""
    return signing.signature(signing.store_key(), signed)
