#!/bin/sh
# PreToolUse hook for request_refund: refunds above the limit (first argument, CNY) need a human.
# Exit 2 blocks the call; stderr becomes the tool error the model sees, steering it to escalate.
limit=${1:-500}
input=$(cat)
amount=$(printf '%s' "$input" | tr -d '\n' | sed -n 's/.*"amount"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p')
if [ -n "$amount" ] && [ "$amount" -gt "$limit" ]; then
  echo "Refunds above ${limit} CNY need a human agent: call escalate_to_human instead (requested ${amount})." >&2
  exit 2
fi
exit 0
