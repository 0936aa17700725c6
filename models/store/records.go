package store

// records lists one value of every record type, one per table; the schema test checks
// each against its migrated table.
var records = []any{
	&migrationRecord{},
	&agentRecord{},
	&agentSlotRecord{},
	&tokenRecord{},
	&sessionRecord{},
	&loginFailureRecord{},
	&goalRecord{},
	&taskRecord{},
	&taskDepRecord{},
	&templateRecord{},
	&runRecord{},
	&attemptRecord{},
	&inboxRecord{},
	&eventRecord{},
	&ledgerRecord{},
	&rulesRecord{},
}
