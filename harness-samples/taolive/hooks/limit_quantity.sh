#!/bin/sh
# PreToolUse hook for create_purchase_link: enforce the per-order purchase limit.
# Input: Claude-Code hook JSON on stdin ({"tool_name": ..., "tool_input": {"quantity": N, ...}, ...}).
# Exit 0 allows the call; exit 2 blocks it and stderr goes back to the model as the tool error.
# POSIX sh + sed only, so it runs in minimal containers without jq.
MAX_QUANTITY=20

input=$(cat)
quantity=$(printf '%s' "$input" | tr -d '\n' | sed -n 's/.*"quantity"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p')

if [ -n "$quantity" ] && [ "$quantity" -gt "$MAX_QUANTITY" ]; then
  echo "单次最多购买 ${MAX_QUANTITY} 件，请告知观众限购规则。Purchase limit is ${MAX_QUANTITY} per order (requested ${quantity})." >&2
  exit 2
fi
exit 0
