#!/usr/bin/env bash
# test_rest_lifecycle.sh in the store layout (AGENTD_GIT_STORE_DIR, the default of caged sessions).
ITEST_GIT_LAYOUT=store exec bash "$(dirname "${BASH_SOURCE[0]}")/test_rest_lifecycle.sh"
