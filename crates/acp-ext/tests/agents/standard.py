"""A scripted agent of standard ACP: it sends what the official adapters
send (codex-acp 2.6's standard form, `official-adapters.md` sections 1, 2
and 5) and nothing of ACP Extension Core.

- `initialize` advertises steering in the top-level `_meta.steering` and no
  extension at all.
- Each prompt, for a client that advertised `subagents: {}`: two children
  announced on the session (`capabilities: {}`, a title, the spawn prompt as
  description, no state), each then `running` with the cancel capability,
  a message chunk, a tool call and a `usage_update` on its own session; the
  first ends `idle`/`end_turn`, the second `idle`/`error`. The parent gets a
  message chunk, a `usage_update` carrying claude's `_claude/rateLimit`, and
  the prompt result codex's `usage` and `_meta.quota`.
  Without `subagents`, the prompt gets only the parent's chunk.
- `_session/steering`: `injected` when the text says "inject", otherwise
  `promptRequired` (`noRunningTurn`) when the client asked for it, else
  `startedNewTurn` (the legacy default).
- `_session/goal`: `{}`.
"""
import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session, update):
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session, "update": update}})


subagents = False
for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None or method is None:
        continue
    if method == "initialize":
        caps = params.get("clientCapabilities") or {}
        subagents = isinstance(caps.get("subagents"), dict)
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1,
            "agentInfo": {"name": "standard-scripted", "version": "0"},
            "authMethods": [],
            "agentCapabilities": {"loadSession": False},
            "_meta": {"steering": {"supported": True}},
        }})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        if subagents:
            for n in (1, 2):
                update("s1", {"sessionUpdate": "subagent_update",
                              "sessionId": f"s1:subagent:t{n}", "capabilities": {},
                              "title": f"Explorer {n}",
                              "description": f"Look at part {n}"})
            for n in (1, 2):
                child = f"s1:subagent:t{n}"
                update("s1", {"sessionUpdate": "subagent_update", "sessionId": child,
                              "capabilities": {"cancel": {}}})
                update("s1", {"sessionUpdate": "subagent_update", "sessionId": child,
                              "state": {"state": "running"}})
                update(child, {"sessionUpdate": "agent_message_chunk",
                               "content": {"type": "text", "text": f"Part {n} looks fine."}})
                update(child, {"sessionUpdate": "tool_call", "toolCallId": f"call-{n}",
                               "title": "Read file", "status": "completed"})
                update(child, {"sessionUpdate": "usage_update", "used": 100 * n,
                               "size": 200000})
            update("s1", {"sessionUpdate": "subagent_update",
                          "sessionId": "s1:subagent:t1", "capabilities": {"cancel": None},
                          "state": {"state": "idle", "stopReason": "end_turn"}})
            update("s1", {"sessionUpdate": "subagent_update",
                          "sessionId": "s1:subagent:t2", "capabilities": {"cancel": None},
                          "state": {"state": "idle", "stopReason": "error",
                                    "error": {"code": -32603, "message": "Subagent work failed"}}})
        update("s1", {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": "Both parts checked."}})
        # claude's context update with its rate limit.
        update("s1", {"sessionUpdate": "usage_update", "used": 53755, "size": 200000,
                      "_meta": {"_claude/rateLimit": {
                          "status": "allowed_warning", "resetsAt": 1790092800,
                          "rateLimitType": "five_hour", "utilization": 0.91}}})
        # codex's turn usage and quota.
        count = {"totalTokens": 1300, "inputTokens": 200, "cachedInputTokens": 1000,
                 "cacheWriteInputTokens": 0, "outputTokens": 100, "reasoningOutputTokens": 40}
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "stopReason": "end_turn",
            "usage": {"totalTokens": 1300, "inputTokens": 200, "cachedReadTokens": 1000,
                      "cachedWriteTokens": 0, "outputTokens": 100, "thoughtTokens": 40},
            "_meta": {"quota": {"token_count": count,
                                "model_usage": [{"model": "gpt-5.5", "token_count": count}]}},
        }})
    elif method == "_session/steering":
        text = " ".join(b.get("text", "") for b in params.get("prompt") or [])
        behavior = ((params.get("_meta") or {}).get("steering") or {}).get("idleBehavior")
        if "inject" in text:
            result = {"outcome": "injected"}
        elif behavior == "promptRequired":
            result = {"outcome": "promptRequired", "reason": "noRunningTurn"}
        else:
            result = {"outcome": "startedNewTurn"}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "_session/goal":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": "Method not found"}})
