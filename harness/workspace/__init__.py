"""Where a run works: git, worktrees, round commits and diffs."""
