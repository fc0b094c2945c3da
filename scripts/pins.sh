# Pinned versions of the coding-agent CLIs the tests run for real (sourced by setup and test).
# Claude Code: the newest 2.1.x and the last 2.0.x (a JavaScript build run by node).
PAO_CLAUDE_VERSIONS="${PAO_CLAUDE_VERSIONS-2.1.332 2.0.77}"  # set it empty to skip the install
export PAO_CLAUDE_VERSIONS
