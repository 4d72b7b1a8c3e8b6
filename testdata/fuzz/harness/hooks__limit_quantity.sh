--- hooks/limit_quantity.sh
#!/bin/sh
# PreToolUse hook for create_purchase_link: enforce the per-order purchase limit.
# Input: Claude-Code hook JSON on stdin ({"tool_name": ..., "tool_input": {"quantity": N, ...}, ...}).
# Exit 0 allows the call; exit 2 blocks it and stderr goes back to the model as the tool error.
# POSIX sh builtins only (no cat/sed/jq): one process per call, so the hook costs well under a
# millisecond and runs in minimal containers.
MAX_QUANTITY=20

input=
while IFS= read -r line || [ -n "$line" ]; do
  input="$input$line"
done

rest=${input#*\"quantity\"}
[ "$rest" = "$input" ] && exit 0 # no quantity argument: nothing to check
rest=${rest#*:}
while case $rest in [[:space:]]*) true ;; *) false ;; esac; do
  rest=${rest#?}
done
quantity=${rest%%[!0-9]*}

if [ -n "$quantity" ] && [ "$quantity" -gt "$MAX_QUANTITY" ]; then
  echo "单次最多购买 ${MAX_QUANTITY} 件，请告知观众限购规则。Purchase limit is ${MAX_QUANTITY} per order (requested ${quantity})." >&2
  exit 2
fi
exit 0
