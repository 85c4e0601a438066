"""Where chorus's Python readers find a published data set: $CHORUS_SHARED_DATA's copy when
it has one, else chorus's data cache (downloaded and checked by SHA-256 on first use, as
`chorus data fetch` does)."""
import os as _os

from chorus import _chorus


def directory(name, shared_subdir, probe_file):
    """The directory of data set `name` (a `chorus data list` name)."""
    shared = _os.environ.get("CHORUS_SHARED_DATA")
    if shared and _os.path.isfile(_os.path.join(shared, shared_subdir, probe_file)):
        return _os.path.join(shared, shared_subdir)
    return _chorus.datasets.fetch(name)
