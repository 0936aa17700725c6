package store

// creatorRef stores a creator: 0 is the operator at the command line (models.System),
// who is no agent row, and is stored as NULL.
func creatorRef(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// creatorID reads a stored creator back; NULL is 0.
func creatorID(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
