#!/usr/bin/env bash
# HSA-RL on verl with HAT's live room as the environment (docs/services.md).
#   ALGO=grpo|gspo|gdpo  MODEL=Qwen/Qwen3-30B-A3B  NODES=…  GPUS_PER_NODE=8
# Start the services first, on a CPU node the rollout workers reach:
#   hat sim serve --harness harness-samples/taolive --tasks tasks.train.jsonl --host 0.0.0.0 --api-key $HAT_API_KEY --out episodes.jsonl
#   judge serve --host 0.0.0.0 --api-key $HAT_API_KEY          # only for the reward function path
# and build the data: python examples/verl/make_dataset.py tasks.train.jsonl train.parquet
set -euo pipefail
ALGO=${ALGO:-gspo}
MODEL=${MODEL:-Qwen/Qwen3-30B-A3B}
export HAT_ENV_URL=${HAT_ENV_URL:-http://127.0.0.1:8100}
export HAT_JUDGE_URL=${HAT_JUDGE_URL:-http://127.0.0.1:8200}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here:$here/..:${PYTHONPATH:-}"

common=(
  data.train_files=train.parquet data.val_files=dev.parquet data.return_raw_chat=True
  data.train_batch_size=64 data.max_prompt_length=6144 data.max_response_length=2048
  actor_rollout_ref.model.path="$MODEL"
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async
  actor_rollout_ref.rollout.n=8                                   # G, the group size
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$here/agent_loop.yaml"
  actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_type=low_var_kl
  actor_rollout_ref.actor.kl_loss_coef=0.001
  custom_reward_function.path="$here/hat_reward.py" custom_reward_function.name=compute_score
  trainer.nnodes=${NODES:-1} trainer.n_gpus_per_node=${GPUS_PER_NODE:-8}
  trainer.project_name=hat trainer.experiment_name="hsa-rl-$ALGO"
)
case "$ALGO" in
  grpo) algo=(algorithm.adv_estimator=grpo actor_rollout_ref.actor.clip_ratio_low=0.2 actor_rollout_ref.actor.clip_ratio_high=0.28) ;;
  # GSPO (reference §2): sequence-level ratio, tiny clip range, no KL.
  gspo) algo=(algorithm.adv_estimator=grpo actor_rollout_ref.actor.policy_loss.loss_mode=gspo
              actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean
              actor_rollout_ref.actor.clip_ratio_low=3e-4 actor_rollout_ref.actor.clip_ratio_high=4e-4
              actor_rollout_ref.actor.clip_ratio_c=10.0 actor_rollout_ref.actor.use_kl_loss=False) ;;
  # GDPO (reference §3): each judge dimension normalised in its group, then summed.
  gdpo) algo=(algorithm.adv_estimator=gdpo reward.reward_manager.name=gdpo
              '+algorithm.gdpo_reward_keys=["accuracy","effectiveness","tool_rationality","skill_selection","cot_length"]'
              actor_rollout_ref.actor.policy_loss.loss_mode=gspo
              actor_rollout_ref.actor.clip_ratio_low=3e-4 actor_rollout_ref.actor.clip_ratio_high=4e-4) ;;
  *) echo "ALGO must be grpo, gspo or gdpo" >&2; exit 2 ;;
esac
python3 -m verl.trainer.main_ppo "${common[@]}" "${algo[@]}" "$@"
