#!/usr/bin/env bash
# Mode switches of the real opencode CLI: one conversation across terminal and
# structured mode (real_agents/switch.sh).
SWITCH_AGENT=opencode
source "$(dirname "${BASH_SOURCE[0]}")/real_agents/switch.sh"
