"""gunicorn's threaded worker, where no slow client holds a thread.

gunicorn's own `gthread` worker hands a connection to a thread as soon as it sends a byte, and
the thread then reads the request's body and writes the answer at the client's pace: eight
uploads trickling 1 KB/s held all eight threads of two workers, and every page waited. Here the
worker's event loop (the thread that accepts connections) does both ends itself, without
blocking:

- a request is read whole (headers and body, the body spooled to a temporary file past 1 MiB)
  before a thread takes it; h11 says where the request ends. The headers must arrive within
  WEB_HEADER_SECONDS and the body at WEB_MIN_RATE bytes a second on average after that grace,
  or the client gets 408 and the connection closes;
- the thread writes the answer into a spooled buffer and is free; the loop sends it as the
  client reads, at WEB_MIN_RATE at least after the same grace, or closes the connection;
- one client address holds at most WEB_CONNECTIONS_PER_ADDRESS connections of a worker (503
  past it), except a trusted proxy's (TRUSTED_PROXIES), which buffers in front of it.

Everything else (keep-alive, the parser, errors, graceful stops) is gunicorn's. Used by the
compose file, the image and `make run` (`-k config.web_worker.BufferedThreadWorker`);
tests/config/test_slow_clients.py proves it with slow clients against a real gunicorn.
"""

import ipaddress
import selectors
import socket
import tempfile
import time
from functools import partial

import h11
from gunicorn.workers.gthread import TConn, ThreadWorker

SPOOL_BYTES = 1024**2  # a request or an answer is kept in memory up to this, then on disk
READ_BYTES = 256 * 1024
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _answer(status: str, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


class Buffered:
    """The client's socket as gunicorn's threads see it: reads come from the request read
    beforehand, writes go to a buffer the event loop sends. Anything else is the socket's."""

    def __init__(self, raw: socket.socket, io_seconds: float, on_close=None):
        self.raw = raw
        self.io_seconds = io_seconds
        self.on_close = on_close
        self.inbox = None  # the request read beforehand, what the thread has not read of it
        self.outbox = None  # the answer the thread wrote, what is not sent yet
        self.sent = 0

    # What the thread calls

    def recv(self, size):
        if self.inbox is not None:
            data = self.inbox.read(size)
            if data:
                return data
            self.inbox.close()
            self.inbox = None
        return self.raw.recv(size)  # only past a request read whole (bounded by io_seconds)

    def sendall(self, data):
        if self.outbox is None:
            return self.raw.sendall(data)
        self.outbox.write(data)
        return None

    def send(self, data):
        self.sendall(data)
        return len(data)

    def setblocking(self, flag):
        # A blocking read or write in a thread waits io_seconds at most.
        if flag:
            self.raw.settimeout(self.io_seconds)
        else:
            self.raw.setblocking(False)

    def shutdown(self, how):
        self.flush()
        return self.raw.shutdown(how)

    def close(self):
        self.flush()
        self.discard()
        if self.on_close is not None:
            self.on_close()
            self.on_close = None
        return self.raw.close()

    def __getattr__(self, name):
        return getattr(self.raw, name)

    # What the event loop calls

    def fill(self, spool) -> None:
        """The next request, read whole: the thread reads it from here."""
        spool.seek(0)
        self.inbox = spool
        self.outbox = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        self.sent = 0

    def leftover(self) -> bytes:
        """What was read beforehand and the thread did not read (a pipelined request)."""
        if self.inbox is None:
            return b""
        data = self.inbox.read()
        self.inbox.close()
        self.inbox = None
        return data

    def pending(self) -> bool:
        return self.outbox is not None and self.outbox.tell() > self.sent

    def drain(self) -> bool:
        """Send what the client will take now; True once all is sent."""
        while self.pending():
            self.outbox.seek(self.sent)
            chunk = self.outbox.read(READ_BYTES)
            self.outbox.seek(0, 2)
            try:
                self.sent += self.raw.send(chunk)
            except (BlockingIOError, InterruptedError):
                return False
        self.discard()
        return True

    def flush(self) -> None:
        """Send the answer before the thread closes the connection (an error's path)."""
        if self.pending():
            self.outbox.seek(self.sent)
            data = self.outbox.read()
            self.outbox = None
            try:
                self.raw.settimeout(self.io_seconds)
                self.raw.sendall(data)
            except OSError:
                pass

    def discard(self) -> None:
        if self.outbox is not None:
            self.outbox.close()
            self.outbox = None


class Reading:
    """A request on its way in: the bytes so far, and where h11 says it stands."""

    def __init__(self, now: float, header_seconds: float, leftover: bytes = b""):
        self.parser = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        self.started = now
        self.deadline = now + header_seconds
        self.body_started = None
        self.received = 0
        self.complete = False
        self.closed = False
        self.expects_continue = False
        if leftover:
            self.take(leftover)

    def take(self, data: bytes) -> None:
        self.spool.write(data)
        if self.body_started is not None:
            self.received += len(data)
        try:
            self.parser.receive_data(data)
            while True:
                event = self.parser.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    return
                if isinstance(event, h11.Request):
                    self.body_started = time.monotonic()
                    self.expects_continue = any(
                        name == b"expect" and value.lower() == b"100-continue"
                        for name, value in event.headers)
                elif isinstance(event, h11.EndOfMessage):
                    self.complete = True
                    return
        except h11.RemoteProtocolError:
            self.complete = True  # gunicorn's parser reads it and answers what is wrong


class BufferedThreadWorker(ThreadWorker):
    def run(self):
        from django.conf import settings  # configured once the application is loaded

        self.header_seconds = settings.WEB_HEADER_SECONDS
        self.min_rate = settings.WEB_MIN_RATE
        self.per_address = settings.WEB_CONNECTIONS_PER_ADDRESS
        self.trusted = settings.TRUSTED_PROXIES
        self.cfg.set("sendfile", False)  # answers go through Buffered, never os.sendfile
        self.reading = {}  # conn: Reading
        self.writing = {}  # conn: (future, started)
        self.addresses = {}  # client address: open connections
        super().run()

    # Connections in and out

    def accept(self, listener):
        try:
            client_sock, client_addr = listener.accept()
        except OSError:
            return
        address = client_addr[0] if isinstance(client_addr, tuple) else ""
        if not self._admit(address):
            try:
                client_sock.setblocking(False)
                client_sock.send(_answer("503 Service Unavailable", "Too many connections "
                                         "from your address at once.\n"))
            except OSError:
                pass
            client_sock.close()
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())
        conn.sock = Buffered(client_sock, self.header_seconds,
                             on_close=partial(self._release, address))
        self.enqueue_req(conn)

    def _admit(self, address: str) -> bool:
        if not self.per_address or not address:
            return True
        try:
            ip = ipaddress.ip_address(address)
            if any(ip in network for network in self.trusted):
                return True
        except ValueError:
            return True
        if self.addresses.get(address, 0) >= self.per_address:
            return False
        self.addresses[address] = self.addresses.get(address, 0) + 1
        return True

    def _release(self, address: str) -> None:
        if address in self.addresses:
            self.addresses[address] -= 1
            if self.addresses[address] <= 0:
                del self.addresses[address]

    def _drop(self, conn, answer: bytes | None = None) -> None:
        try:
            self.poller.unregister(conn.sock.raw)
        except (KeyError, ValueError, OSError):
            pass
        self.reading.pop(conn, None)
        self.writing.pop(conn, None)
        if answer:
            try:
                conn.sock.raw.setblocking(False)
                conn.sock.raw.send(answer)
            except OSError:
                pass
        conn.sock.discard()
        try:
            conn.sock.close()
        except OSError:
            pass
        self.nr_conns -= 1

    # A request read whole before a thread takes it

    def enqueue_req(self, conn):
        sock = conn.sock
        if not isinstance(sock, Buffered):
            return super().enqueue_req(conn)
        leftover = sock.leftover()
        if conn.parser is not None:
            unreader = conn.parser.unreader
            leftover = unreader.buf.getvalue() + leftover
            unreader.buf.seek(0)
            unreader.buf.truncate()
        reading = Reading(time.monotonic(), self.header_seconds, leftover)
        sock.raw.setblocking(False)
        if not reading.complete:
            self._receive(conn, reading)  # a request in one packet is handed over at once
        if reading.complete:
            return self._hand_over(conn, reading)
        if reading.closed:
            return self._drop(conn)
        self.reading[conn] = reading
        self.poller.register(sock.raw, selectors.EVENT_READ, partial(self._readable, conn))
        return None

    def _receive(self, conn, reading: Reading) -> None:
        """Take what the socket holds now, without waiting."""
        try:
            data = conn.sock.raw.recv(READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            reading.closed = True
            return
        if not data:
            reading.closed = True  # the client went away
            return
        waiting = reading.expects_continue
        reading.take(data)
        if reading.expects_continue and not waiting and not reading.complete:
            try:
                conn.sock.raw.send(_CONTINUE)
            except OSError:
                reading.closed = True
                return
        if reading.body_started is not None:
            reading.deadline = (reading.body_started + self.header_seconds
                                + reading.received / self.min_rate)

    def _readable(self, conn, _fileobj):
        reading = self.reading[conn]
        self._receive(conn, reading)
        if reading.closed:
            return self._drop(conn)
        if reading.complete:
            self.poller.unregister(conn.sock.raw)
            del self.reading[conn]
            self._hand_over(conn, reading)

    def _hand_over(self, conn, reading: Reading):
        conn.sock.fill(reading.spool)
        conn.data_ready = True
        fs = self.tpool.submit(self.handle, conn)
        fs.add_done_callback(
            lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    # An answer sent by the event loop after the thread is done

    def finish_request(self, conn, fs):
        sock = conn.sock
        if isinstance(sock, Buffered) and sock.pending():
            sock.raw.setblocking(False)
            try:
                done = sock.drain()  # an answer the socket takes at once needs no waiting
            except OSError:
                return self._drop(conn)
            if done:
                return self.finish_request(conn, fs)
            self.writing[conn] = (fs, time.monotonic())
            self.poller.register(sock.raw, selectors.EVENT_WRITE,
                                 partial(self._writable, conn))
            return
        if isinstance(sock, Buffered):
            sock.discard()
        super().finish_request(conn, fs)

    def _writable(self, conn, _fileobj):
        fs, _ = self.writing[conn]
        try:
            done = conn.sock.drain()
        except OSError:
            fs.cancel()
            return self._drop(conn)
        if done:
            self.poller.unregister(conn.sock.raw)
            del self.writing[conn]
            self.finish_request(conn, fs)

    # Deadlines, checked once a loop

    def murder_pending(self):
        super().murder_pending()
        now = time.monotonic()
        for conn, reading in list(self.reading.items()):
            if now > reading.deadline:
                self._drop(conn, _answer("408 Request Timeout", "The request came too slowly."
                                         "\n"))
        for conn, (_, started) in list(self.writing.items()):
            if now > started + self.header_seconds + conn.sock.sent / self.min_rate:
                self._drop(conn)  # a reader too slow to keep
