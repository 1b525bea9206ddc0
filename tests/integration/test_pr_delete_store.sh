#!/usr/bin/env bash
# test_pr_delete.sh in the store layout (AGENTD_GIT_STORE_DIR, the default of caged sessions).
ITEST_GIT_LAYOUT=store exec bash "$(dirname "${BASH_SOURCE[0]}")/test_pr_delete.sh"
