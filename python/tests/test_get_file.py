"""tf.keras.utils.get_file against a server on 127.0.0.1: downloaded once and then found in the cache, hashes
checked, tar and zip archives extracted where Keras 3 puts them, and failures that leave nothing behind."""
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile

import pytest

PAYLOAD = b"lockstep get_file test payload\n" * 100


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


FILES = {
    "/data.txt": PAYLOAD,
    "/photos.tgz": tar_bytes({"photos/a.txt": b"a", "photos/b/c.txt": b"c"}),
    "/words.zip": zip_bytes({"words/list.txt": b"one two"}),
    "/evil.tgz": tar_bytes({"../escaped.txt": b"x"}),
}


@pytest.fixture
def server():
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            hits.append(self.path)
            body = FILES.get(self.path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    httpd.shutdown()
    httpd.server_close()


def test_downloads_once_then_reads_the_cache(tf, server, tmp_path):
    url, hits = server
    path = tf.keras.utils.get_file(origin=f"{url}/data.txt", cache_dir=tmp_path)
    assert path == os.path.join(tmp_path, "datasets", "data.txt")
    assert open(path, "rb").read() == PAYLOAD
    again = tf.keras.utils.get_file("data.txt", f"{url}/data.txt", cache_dir=tmp_path,
                                    file_hash=hashlib.sha256(PAYLOAD).hexdigest())
    assert again == path and hits == ["/data.txt"]
    tf.keras.utils.get_file("data.txt", f"{url}/data.txt", cache_dir=tmp_path, force_download=True)
    assert hits == ["/data.txt", "/data.txt"]


def test_keras_home_and_an_absolute_cache_subdir(tf, server, tmp_path, monkeypatch):
    url, _ = server
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    assert tf.keras.utils.get_file(origin=f"{url}/data.txt") == str(tmp_path / "home" / "datasets" / "data.txt")
    there = tmp_path / "elsewhere"
    assert tf.keras.utils.get_file(origin=f"{url}/data.txt", cache_subdir=str(there)) == str(there / "data.txt")


def test_a_wrong_hash_keeps_nothing_and_a_stale_file_is_fetched_again(tf, server, tmp_path):
    url, hits = server
    with pytest.raises(ValueError, match="does not have the md5 hash"):
        tf.keras.utils.get_file(origin=f"{url}/data.txt", cache_dir=tmp_path, md5_hash="0" * 32)
    assert os.listdir(tmp_path / "datasets") == []
    stale = tmp_path / "datasets" / "data.txt"
    stale.write_bytes(b"old")
    path = tf.keras.utils.get_file(origin=f"{url}/data.txt", cache_dir=tmp_path,
                                   file_hash=hashlib.md5(PAYLOAD).hexdigest())
    assert open(path, "rb").read() == PAYLOAD and len(hits) == 2


def test_extracts_tar_and_zip_archives_where_keras_3_puts_them(tf, server, tmp_path):
    url, hits = server
    photos = tf.keras.utils.get_file(origin=f"{url}/photos.tgz", extract=True, cache_dir=tmp_path)
    assert photos == os.path.join(tmp_path, "datasets", "photos.tgz")
    assert open(os.path.join(photos, "photos", "b", "c.txt"), "rb").read() == b"c"
    assert os.path.isfile(os.path.join(tmp_path, "datasets", "photos.tgz_archive"))
    named = tf.keras.utils.get_file("words.zip", f"{url}/words.zip", extract=True, cache_dir=tmp_path)
    assert named == os.path.join(tmp_path, "datasets", "words_extracted")
    assert open(os.path.join(named, "words", "list.txt"), "rb").read() == b"one two"
    untarred = tf.keras.utils.get_file("flowers", f"{url}/photos.tgz", untar=True, cache_dir=tmp_path)
    assert os.path.isfile(os.path.join(untarred, "photos", "a.txt"))
    tf.keras.utils.get_file(origin=f"{url}/photos.tgz", extract=True, cache_dir=tmp_path)
    assert hits.count("/photos.tgz") == 2  # the extracted and the untarred copies; the third call read the cache


def test_bad_requests_are_one_line_errors_that_leave_nothing(tf, server, tmp_path):
    url, _ = server
    with pytest.raises(OSError, match=r"URL fetch failure on .*/missing.bin: HTTP 404"):
        tf.keras.utils.get_file(origin=f"{url}/missing.bin", cache_dir=tmp_path)
    with pytest.raises(ValueError, match='specify the "origin"'):
        tf.keras.utils.get_file("x.txt")
    with pytest.raises(ValueError, match="is a path"):
        tf.keras.utils.get_file("sub/x.txt", f"{url}/data.txt", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="outside its folder"):
        tf.keras.utils.get_file(origin=f"{url}/evil.tgz", extract=True, cache_dir=tmp_path)
    assert not (tmp_path / "datasets" / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()
    with pytest.raises(ValueError, match="is not a tar or zip archive"):
        tf.keras.utils.get_file("plain", f"{url}/data.txt", extract=True, cache_dir=tmp_path)
    leftovers = [n for n in os.listdir(tmp_path / "datasets") if n.endswith(".part") or n.startswith(".extracting")]
    assert leftovers == []
