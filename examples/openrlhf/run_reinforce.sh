#!/usr/bin/env bash
# HSA-RL on OpenRLHF with HAT's live room as the multi-turn environment (docs/services.md).
# Data: JSONL rows {"prompt": "<task id>", "label": "<reset request JSON>"} (make_dataset.py).
# Start `hat sim serve --host 0.0.0.0 …` first; set HAT_ENV_URL. OpenRLHF has no GDPO: the agent
# returns the judge's scalar reward, and the dimensions arrive in extra_logs.
# Algorithm flags use OpenRLHF main's dotted names (reference rl_algorithms.md §5.2); releases before
# the rename spell them with underscores (--advantage_estimator, --use_kl_loss, …).
#   ALGO=grpo|gspo  MODEL=Qwen/Qwen3-30B-A3B
set -euo pipefail
ALGO=${ALGO:-gspo}
MODEL=${MODEL:-Qwen/Qwen3-30B-A3B}
here=$(cd "$(dirname "$0")" && pwd)
export HAT_ENV_URL=${HAT_ENV_URL:-http://127.0.0.1:8100}
export PYTHONPATH="$here:$here/..:${PYTHONPATH:-}"
case "$ALGO" in
  grpo) loss=(--actor.policy_loss_type ppo --actor.eps_clip_low_high 0.2 0.28) ;;
  gspo) loss=(--actor.policy_loss_type gspo --actor.eps_clip_low_high 3e-4 4e-4) ;;
  *) echo "ALGO must be grpo or gspo" >&2; exit 2 ;;
esac
ray job submit --address="${RAY_ADDRESS:-http://127.0.0.1:8265}" \
  --runtime-env-json="{\"working_dir\": \"$here/..\", \"env_vars\": {\"HAT_ENV_URL\": \"$HAT_ENV_URL\"}}" \
  -- python3 -m openrlhf.cli.train_ppo_ray \
  --pretrain "$MODEL" --prompt_data train.jsonl --input_key prompt --label_key label \
  --agent_func_path "$here/hat_agent_func.py" --train.async_enable \
  --algo.advantage.estimator group_norm --n_samples_per_prompt 8 \
  --algo.kl.init_coef 0.001 --algo.kl.use_loss --algo.kl.estimator k3 \
  --algo.dynamic_filtering_enable --algo.dynamic_filtering_range 0 1 \
  --generate_max_len 2048 --max_len 8192 "${loss[@]}" "$@"
