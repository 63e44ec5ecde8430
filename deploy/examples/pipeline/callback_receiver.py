#!/usr/bin/env python3
"""Receives the pipeline's callbacks for the walkthrough: prints each POSTed JSON body, answers 204.

    python3 deploy/examples/pipeline/callback_receiver.py [PORT]      # default 9000, on 127.0.0.1
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            doc = json.loads(body)
            print(f"{self.path}: run {doc.get('run_id')} from node {doc.get('node')}:")
            print(json.dumps(doc.get("results", {}).get("describe", doc), indent=2))
        except ValueError:
            print(f"{self.path}: {body!r}")
        sys.stdout.flush()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    HTTPServer(("127.0.0.1", port), Receiver).serve_forever()
