#!/usr/bin/env python3
"""A fake LLM provider for tests: OpenAI Chat Completions and Anthropic Messages.

Listens on 127.0.0.1 (an OS-chosen port, printed as "port N" on stdout), checks
requests the way the real services do (key header, anthropic-version, model,
messages), and answers each accepted request with the next step of a script:

  {"answer": "text"}                       200 with the text, finish "stop"/"end_turn"
  {"answer": "text", "truncated": true}    200, finish "length"/"max_tokens"
  {"empty": true}                          200 with no text
  {"raw": "<body>"}                        200 with exactly this body (malformed JSON)
  {"status": 429, "retry_after": "1"}      an error of the protocol's shape, with headers
  {"status": 401, "echo_key": true}        ... whose message quotes the key it was sent
  {"answer": "x {key}", "echo_key": true}  an answer quoting the key it was sent
  {"hang_s": 5}                            sleeps, then answers (after the client gave up)
  {"status": 413}                          413 Request Entity Too Large (a proxy's body limit)
  {"answer": "x", "cached": 900, "cache_write": 50}
                                           usage reports prompt tokens read from / written to the cache
  {"answer": "x", "break_after": 2}        streams 2 text events, then closes: a broken stream
  {"answer": "x", "stall_after": 1, "stall_s": 30}
                                           streams 1 text event, then sends nothing for 30 s
  {"answer": "x", "no_usage": true}        the answer without any usage (a proxy that drops it)
  {"stream_error": {"type": "authentication_error", "message": "..."}}
                                           a 200 stream whose first event is an error event
                                           (Anthropic "event: error"; OpenAI data: {"error": ...})
  {"empty_stream": true}                   a 200 event stream with no event at all
  {"raw": "<html>", "content_type": "text/html"}  a raw 200 body of that type

--max-body N refuses every request whose body is longer than N bytes with a
413 (a proxy's limit) without taking a step; the log marks it "refused": 413.

A request with "stream": true is answered with server-sent events the way
each service sends them (OpenAI chat.completion.chunk with a usage chunk and
[DONE]; Anthropic message_start, content_block_delta, message_delta,
message_stop); the answer's text comes in pieces of 8 characters.

Usage fields are filled in (input from the request's length, output from the
answer's). GET /v1/models lists one model (the key checked, not logged).
Every chat request is appended to --log as one JSON line: method, path,
headers (lower-cased), the parsed body, and the step it got. When the script
runs out, requests get 503. Standard library only.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, steps, log_path, key, max_body=None):
        self.max_body = max_body
        self.steps = steps
        self.next = 0
        self.log_path = log_path
        self.key = key
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            if self.next >= len(self.steps):
                return None, self.next
            self.next += 1
            return self.steps[self.next - 1], self.next - 1

    def log(self, entry):
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def tokens(text):
    return max(1, len(text) // 4)


def error_body(anthropic, status, message):
    if anthropic:
        kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    code = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)
    kind = {429: "requests", 500: "server_error", 503: "server_error"}.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm/1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def send(self, status, body, headers=None, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def stream(self, anthropic, step, index, model, text, usage_in, usage_out, cached, cache_write, headers):
        """Server-sent events, the connection closed at the end (no length)."""
        self.close_connection = True
        no_usage = step.get("no_usage")
        truncated = step.get("truncated")
        pieces = [text[i:i + 8] for i in range(0, len(text), 8)]
        events = []
        if anthropic:
            def ev(kind, data):
                return "event: %s\ndata: %s\n\n" % (kind, json.dumps(data))
            start = {"id": "msg_%d" % index, "type": "message", "role": "assistant", "model": model, "content": []}
            if not no_usage:
                start["usage"] = {"input_tokens": usage_in - cached - cache_write, "output_tokens": 1,
                                  "cache_read_input_tokens": cached, "cache_creation_input_tokens": cache_write}
            head = [ev("message_start", {"type": "message_start", "message": start}),
                    ev("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}})]
            body = [ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": p}}) for p in pieces]
            delta = {"type": "message_delta", "delta": {"stop_reason": "max_tokens" if truncated else "end_turn"}}
            if not no_usage:
                delta["usage"] = {"output_tokens": usage_out}
            tail = [ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ev("message_delta", delta),
                    ev("message_stop", {"type": "message_stop"})]
            if "stream_error" in step:
                head = [ev("error", {"type": "error", "error": step["stream_error"]})]
        else:
            def chunk(delta, finish=None, usage=None):
                d = {"id": "chatcmpl-%d" % index, "object": "chat.completion.chunk", "model": model,
                     "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
                if usage:
                    d["usage"] = usage
                return "data: %s\n\n" % json.dumps(d)
            head = [chunk({"role": "assistant", "content": ""})]
            body = [chunk({"content": p}) for p in pieces]
            tail = [chunk({}, "length" if truncated else "stop")]
            if not no_usage:
                tail.append(chunk(None, usage={"prompt_tokens": usage_in, "completion_tokens": usage_out,
                                               "total_tokens": usage_in + usage_out,
                                               "prompt_tokens_details": {"cached_tokens": cached}}))
            tail.append("data: [DONE]\n\n")
            if "stream_error" in step:
                head = ["data: %s\n\n" % json.dumps({"error": step["stream_error"]})]
        events = head + body + tail
        if step.get("empty_stream"):
            events = []
        if "stream_error" in step:
            events = head  # the error event ends the stream
        cut = None
        if "break_after" in step:
            cut = len(head) + step["break_after"]
        if "stall_after" in step:
            cut = len(head) + step["stall_after"]
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            for i, e in enumerate(events):
                if cut is not None and i == cut:
                    if "stall_after" in step:
                        time.sleep(step.get("stall_s", 30))
                    return  # a broken stream: closed before its last event
                self.wfile.write(e.encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        """The model list (GET /v1/models, both protocols): what a health check asks.
        Not logged: the log holds the chat calls only."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        anthropic = "x-api-key" in headers or "anthropic-version" in headers
        if self.path not in ("/v1/models", "/models"):
            return self.send(404, error_body(anthropic, 404, "Unknown request URL: GET " + self.path))
        sent_key = headers.get("x-api-key", "") if anthropic else headers.get("authorization", "")[len("Bearer "):]
        if self.server.state.key is not None and sent_key != self.server.state.key:
            return self.send(401, error_body(anthropic, 401, "invalid x-api-key" if anthropic else
                                             "Incorrect API key provided."))
        self.send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        anthropic = self.path == "/v1/messages"
        entry = {"method": "POST", "path": self.path, "headers": headers, "step": None}
        try:
            body = json.loads(raw)
            entry["body"] = body
        except ValueError:
            body = None
            entry["body"] = raw.decode("utf-8", "replace")

        request_id = {"request-id" if anthropic else "x-request-id": "req_%d" % time.time_ns()}
        if self.path not in ("/chat/completions", "/v1/chat/completions", "/v1/messages"):
            state.log(entry)
            return self.send(404, error_body(anthropic, 404, "Unknown request URL: POST " + self.path), request_id)
        sent_key = headers.get("x-api-key", "") if anthropic else headers.get("authorization", "")[len("Bearer "):]
        if state.key is not None and sent_key != state.key:
            state.log(entry)
            return self.send(401, error_body(anthropic, 401, "invalid x-api-key" if anthropic else
                                             "Incorrect API key provided."), request_id)
        if anthropic and "anthropic-version" not in headers:
            state.log(entry)
            return self.send(400, error_body(True, 400, "anthropic-version: header is required"), request_id)
        if not isinstance(body, dict) or not body.get("model") or not isinstance(body.get("messages"), list) or \
                (anthropic and "max_tokens" not in body):
            state.log(entry)
            return self.send(400, error_body(anthropic, 400, "invalid request body"), request_id)

        if state.max_body is not None and length > state.max_body:
            entry["refused"] = 413
            state.log(entry)
            return self.send(413, error_body(anthropic, 413, "request entity too large"), request_id)

        step, index = state.take()
        entry["step"] = index
        state.log(entry)
        if step is None:
            return self.send(503, error_body(anthropic, 503, "script exhausted"), request_id)
        if "hang_s" in step:
            time.sleep(step["hang_s"])
        status = step.get("status", 200)
        headers_out = dict(request_id)
        if "retry_after" in step:
            headers_out["Retry-After"] = step["retry_after"]
        if status != 200:
            message = step.get("message", "scripted error %d" % status)
            if step.get("echo_key"):
                message += ": " + sent_key
            if status == 404:
                message = "model: %s" % body["model"] if anthropic else \
                    "The model `%s` does not exist or you do not have access to it." % body["model"]
            return self.send(status, error_body(anthropic, status, message), headers_out)
        if "raw" in step:
            return self.send(200, step["raw"].encode(), headers_out, step.get("content_type", "application/json"))

        text = "" if step.get("empty") else step.get("answer", "")
        if step.get("echo_key"):
            text = text.replace("{key}", sent_key)
        prompt = json.dumps(body["messages"]) + json.dumps(body.get("system", ""))
        usage_in, usage_out = tokens(prompt), tokens(text) if text else 0
        cached, cache_write = step.get("cached", 0), step.get("cache_write", 0)
        if body.get("stream") or step.get("empty_stream") or "stream_error" in step:
            return self.stream(anthropic, step, index, body["model"], text, usage_in, usage_out, cached,
                               cache_write, headers_out)
        if anthropic:
            out = {"id": "msg_%d" % index, "type": "message", "role": "assistant", "model": body["model"],
                   "content": [{"type": "text", "text": text}] if text else [],
                   "stop_reason": "max_tokens" if step.get("truncated") else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": usage_in - cached - cache_write, "output_tokens": usage_out,
                             "cache_read_input_tokens": cached, "cache_creation_input_tokens": cache_write}}
            if step.get("no_usage"):
                del out["usage"]
        else:
            out = {"id": "chatcmpl-%d" % index, "object": "chat.completion", "created": int(time.time()),
                   "model": body["model"],
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text if text else None},
                                "logprobs": None, "finish_reason": "length" if step.get("truncated") else "stop"}],
                   "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                             "total_tokens": usage_in + usage_out,
                             "prompt_tokens_details": {"cached_tokens": cached}}}
            if step.get("no_usage"):
                del out["usage"]
        self.send(200, out, headers_out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--script", required=True, help="JSON list of steps")
    p.add_argument("--log", required=True, help="JSON-lines request log")
    p.add_argument("--key", help="the only key accepted; any key when absent")
    p.add_argument("--max-body", type=int, help="refuse longer request bodies with 413")
    a = p.parse_args()
    with open(a.script) as f:
        steps = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(steps, a.log, a.key, a.max_body)
    print("port %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
