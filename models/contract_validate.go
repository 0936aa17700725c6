package models

// Validate checks the contract. (Placeholder: the contract work replaces this file.)
func (c *Contract) Validate() error { return nil }
