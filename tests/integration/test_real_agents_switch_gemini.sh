#!/usr/bin/env bash
# Mode switches of the real gemini CLI: one conversation across terminal and
# structured mode (real_agents/switch.sh).
SWITCH_AGENT=gemini
source "$(dirname "${BASH_SOURCE[0]}")/real_agents/switch.sh"
