-- What the judge found on an attempt (protected paths the worker changed, the test
-- floor, held-out tests): a JSON object, empty for attempts that ran no judge's view.
ALTER TABLE attempts ADD COLUMN judge TEXT NOT NULL DEFAULT '';
