#!/usr/bin/env bash
# Mode switches of the real codex CLI, and a configured agent's 409: one conversation across
# terminal and structured mode (real_agents/switch.sh).
SWITCH_AGENT=codex
source "$(dirname "${BASH_SOURCE[0]}")/real_agents/switch.sh"
