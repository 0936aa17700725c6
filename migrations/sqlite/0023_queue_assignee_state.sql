-- "Waiting on you" lists the work assigned to a person that they start or submit:
-- by assignee and state, without reading the assignee's finished tasks.
CREATE INDEX tasks_assignee_state_idx ON tasks (assignee_id, state, id);
