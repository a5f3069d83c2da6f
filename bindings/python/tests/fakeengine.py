"""A unix-socket HTTP server in a thread, standing in for a daemon that
answers (or hangs) so that the offline tests can see what a blocking C call
does. It is a real server the library connects to over a real socket."""

import os
import socket
import threading


class FakeEngine:
    def __init__(self, path, answer=None):
        """answer: bytes to send for each request, or None to hang (read the
        request, say nothing, until stop())."""
        self.path = path
        self.answer = answer
        self.requested = threading.Event()
        self.requests = []
        self._stop = threading.Event()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.on_request = None
        self.client_closed = threading.Event()
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conns = self.conns
        while not self._stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                break
            conns.append(c)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data)
            self.requested.set()
            if self.on_request:
                self.on_request(data)
            if self.answer is not None:
                c.sendall(self.answer)
                c.close()
            else:
                try:
                    while c.recv(65536):
                        pass
                except OSError:
                    pass
                self.client_closed.set()
        for c in conns:
            try:
                c.close()
            except OSError:
                pass

    def stop(self):
        self._stop.set()
        for c in list(self.conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
