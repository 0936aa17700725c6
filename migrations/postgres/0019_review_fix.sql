-- An artifact review's fix task names the task whose review failed (it works in that
-- task's workspace; the review runs again once it is verified). review_warnings keeps
-- the findings a review left outstanding when its rounds ran out and the contract said
-- proceed_with_warnings.
ALTER TABLE tasks ADD COLUMN review_of BIGINT REFERENCES tasks(id);
ALTER TABLE tasks ADD COLUMN review_warnings TEXT NOT NULL DEFAULT '';
