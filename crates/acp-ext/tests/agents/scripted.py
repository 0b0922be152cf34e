"""A scripted ACP agent for the probe's tests: answers like the real agents
whose behaviour the tests reproduce, chosen by the first argument.

  text        every prompt ends `end_turn` with one error-like text chunk
              (cursor-agent-acp without its CLI)
  auth        session/new needs authentication (-32000)
  error-data  every prompt fails with -32603 and `error.data.details`
              (claude-agent-acp when its query closes early)
  slow-init   answers initialize after 2 seconds
  steer-inline    advertises steering by request and handles each prompt
              inline: the steer sent mid-turn is read and answered `failed`
              only after the prompt's response (an SDK agent awaiting its
              turn on the dispatch loop)
  steer-unconfirmed  the same, but answers the steer `injected` before the
              prompt's response and never sends `steer_applied`
  v2          answers the version asked, 1 or 2 (codex-acp 2.6): in v2 the
              initialize result has `capabilities` and `info`, and a prompt
              is answered with a receipt (`{messageId}`) between `running`
              and the `idle` `state_update` that ends the turn (`end_turn`,
              with usage) after one text chunk
  v2-only     the same, but refuses a v1 client with -32022 and
              `{requested, supported: [2]}` (claude-agent-acp under
              `CLAUDE_AGENT_ACP_PROTOCOL=v2`)
  refuse-all  refuses every version asked with -32022, naming the other
              one as supported

In every mode `initialize` lists a terminal auth method only to a client that
advertised `clientCapabilities.auth.terminal`, and advertises vendor metadata
(`_meta.claudeCode`) beside `usage` under both `ua` and `lody`.
"""
import json
import sys
import time

mode = sys.argv[1]
version = 1


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None or method is None:
        continue
    if method == "initialize":
        if mode == "slow-init":
            time.sleep(2)
        asked = params.get("protocolVersion")
        if mode == "refuse-all":
            send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"requested": asked, "supported": [1 if asked == 2 else 2]}}})
            continue
        if mode.startswith("v2"):
            version = 2 if asked == 2 else 1
            if mode == "v2-only" and version == 1:
                send({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"requested": asked, "supported": [2]}}})
                continue
        caps = params.get("clientCapabilities", params.get("capabilities", {}))
        features = {"usage": {"version": 1}}
        if mode.startswith("steer-"):
            features["steering"] = {"version": 1, "transport": "request",
                                    "upstreamTurn": "same", "configPolicy": "active"}
        auth = [{"id": "api-key", "name": "API key"}]
        if caps.get("auth", {}).get("terminal"):
            auth.append({"id": "vendor-login", "name": "Log in", "type": "terminal"})
        agent_caps = {"_meta": {
            "claudeCode": {"promptQueueing": True},
            "ua": features,
            "lody": features,
        }}
        info = {"name": "scripted", "title": "Scripted", "version": "0"}
        if version == 2:
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 2, "info": info, "authMethods": auth,
                "capabilities": agent_caps}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1,
            "agentInfo": info,
            "authMethods": auth,
            "agentCapabilities": agent_caps,
        }})
    elif method == "session/new":
        if mode == "auth":
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32000, "message": "Authentication required"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        if mode == "error-data":
            send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32603, "message": "Internal error",
                "data": {"details": "Query closed before response received"}}})
            continue
        if mode.startswith("steer-"):
            # The turn blocks the loop: the next message (the steer) is
            # read only now.
            steer = json.loads(sys.stdin.readline())
            answer = {"jsonrpc": "2.0", "id": steer.get("id"),
                      "result": {"outcome": "injected" if mode == "steer-unconfirmed" else "failed"}}
            if mode == "steer-unconfirmed":
                send(answer)
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
            if mode == "steer-inline":
                send(answer)
            continue
        if version == 2:
            state = {"sessionUpdate": "state_update", "state": "running", "background": []}
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": "s1", "update": state}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "m-%s" % rid}})
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "s1", "update": {
                    "sessionUpdate": "agent_message_chunk", "messageId": "a-%s" % rid,
                    "content": {"type": "text", "text": "done in v2"}}}})
            time.sleep(0.2)
            idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                    "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1},
                    "background": []}
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": "s1", "update": idle}})
            continue
        send({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s1", "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Unable to process your request because "
                            "cursor-agent CLI is not authenticated"}}}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": "Method not found"}})
