"""tf.keras.utils.get_file: a file from a URL, downloaded once into Keras' cache ($KERAS_HOME or ~/.keras, then
cache_subdir) and found there afterwards; its hash checked when one is given; a tar or zip archive extracted when
asked. Keras 3's names and paths: with extract=True the result is the folder the archive was extracted into.

Unlike Keras, a download lands in a temporary file that replaces the target only once it is complete and its hash
checked, so an interrupted or corrupted download never leaves a file that a later call would take as cached; an
archive is likewise extracted beside its folder and renamed into place. Members of an archive that would land
outside that folder (absolute paths, "..", links) are refused."""
import hashlib
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile

# How long one read from the server may take before the download fails (never wait forever).
TIMEOUT_SECONDS = 60


def keras_home():
    return os.path.expanduser(os.environ.get("KERAS_HOME", os.path.join("~", ".keras")))


def _writable(path):
    """Whether `path` can be created or written: its deepest existing folder is writable."""
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.access(path, os.W_OK)


def _hasher(algorithm, file_hash):
    if algorithm == "sha256" or algorithm == "auto" and file_hash is not None and len(file_hash) == 64:
        return hashlib.sha256()
    if algorithm in ("md5", "auto"):
        return hashlib.md5()
    raise ValueError(f"get_file: hash_algorithm={algorithm!r} is not one of 'auto', 'sha256', 'md5'")


def hash_file(fpath, algorithm="sha256", chunk_size=65535):
    """The file's hex digest (keras.utils' hash_file)."""
    hasher = _hasher(algorithm, None) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535):
    """Whether the file's hash is file_hash (sha256 for a 64-digit hash under "auto", else md5)."""
    return hash_file(fpath, _hasher(algorithm, file_hash), chunk_size) == str(file_hash)


def _inside(root, name):
    target = os.path.realpath(os.path.join(root, name))
    return target == os.path.realpath(root) or target.startswith(os.path.realpath(root) + os.sep)


def _extract_tar(archive, into):
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            link_ok = not (member.issym() or member.islnk()) or _inside(
                into, os.path.join(os.path.dirname(member.name), member.linkname))
            if not _inside(into, member.name) or not link_ok or member.isdev():
                raise ValueError(f"get_file: the archive {archive} has a member {member.name!r} that would be "
                                 "written outside its folder; lockstep does not extract it")
        tar.extractall(into)


def _extract_zip(archive, into):
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if not _inside(into, name):
                raise ValueError(f"get_file: the archive {archive} has a member {name!r} that would be written "
                                 "outside its folder; lockstep does not extract it")
        z.extractall(into)


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extracts a tar or zip archive into `path`; False when it is neither of the formats asked for."""
    formats = {"auto": ["tar", "zip"], None: []}.get(archive_format, archive_format)
    formats = [formats] if isinstance(formats, str) else list(formats)
    for kind in formats:
        is_kind, extract = {"tar": (tarfile.is_tarfile, _extract_tar), "zip": (zipfile.is_zipfile, _extract_zip)}[kind]
        if is_kind(file_path):
            parent = os.path.dirname(os.path.abspath(path)) or "."
            os.makedirs(parent, exist_ok=True)
            staging = tempfile.mkdtemp(prefix=".extracting-", dir=parent)
            try:
                extract(file_path, staging)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                os.replace(staging, path)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            return True
    return False


def _download(origin, target, file_hash, algorithm):
    print(f"Downloading data from {origin}")
    sys.stdout.flush()
    fd, partial = tempfile.mkstemp(prefix=os.path.basename(target) + ".", suffix=".part",
                                   dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(origin, timeout=TIMEOUT_SECONDS) as response:
            shutil.copyfileobj(response, out)
        if file_hash is not None and not validate_file(partial, file_hash, algorithm):
            raise ValueError(f"get_file: the file downloaded from {origin} does not have the {algorithm} hash "
                             f"{file_hash} (incomplete or corrupted); nothing was kept. Check the hash, or try again")
        os.replace(partial, target)
    except urllib.error.HTTPError as e:
        raise OSError(f"URL fetch failure on {origin}: HTTP {e.code} {e.reason}; check the URL, or put the file at "
                      f"{target} to use it without downloading") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        reason = getattr(e, "reason", e)
        raise OSError(f"URL fetch failure on {origin}: {reason}; check the network, or put the file at {target} to "
                      "use it without downloading") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """The path of the file from `origin` in the cache, downloading it when it is missing, its hash differs or
    force_download is set; with extract (or untar) the folder the archive was extracted into."""
    if origin is None:
        raise ValueError('get_file: specify the "origin" argument (the URL of the file to download)')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(cache_dir) if cache_dir is not None else keras_home()
    if not _writable(base):  # Keras' fallback for a read-only home
        base = os.path.join(tempfile.gettempdir(), ".keras")
    folder = os.path.join(base, cache_subdir)
    os.makedirs(folder, exist_ok=True)

    given = os.fspath(fname) if fname is not None else None
    name = given or os.path.basename(urllib.parse.urlsplit(origin).path)
    if not name:
        raise ValueError(f"get_file: cannot tell a file name from the origin {origin!r}; pass fname")
    if os.sep in name:
        raise ValueError(f"get_file: fname={name!r} is a path; pass a file name, and its folder as cache_dir")

    unpack = extract or untar
    if unpack and given and "." in name:
        target = os.path.join(folder, name)
        extracted = os.path.join(folder, name[:name.find(".")] + "_extracted")
    elif unpack:
        target, extracted = os.path.join(folder, name + "_archive"), os.path.join(folder, name)
    else:
        target, extracted = os.path.join(folder, name), None

    fresh = force_download or not os.path.exists(target)
    if not fresh and file_hash is not None and not validate_file(target, file_hash, hash_algorithm):
        print(f"A local file was found, but it does not have the {hash_algorithm} hash {file_hash} (incomplete or "
              "outdated): downloading it again.")
        fresh = True
    if fresh:
        _download(origin, target, file_hash, hash_algorithm)
    if not unpack:
        return target
    if fresh or not os.path.isdir(extracted):
        formats = "tar" if untar else archive_format
        if not extract_archive(target, extracted, formats):
            kinds = {"auto": "tar or zip", None: "extractable"}.get(formats, formats)
            raise ValueError(f"get_file: {target} (from {origin}) is not a {kinds} archive; pass extract=False to "
                             "keep the file as it is")
    return extracted
