-- Verified work lands: a worktree task's branch, the commit it was based on and the
-- commit that was verified; a worker agent's target branch.
ALTER TABLE tasks ADD COLUMN branch TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN base_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN verified_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN target_branch TEXT NOT NULL DEFAULT '';
