package models

// EUNSUPPORTED is the code of a request body in a media type the endpoint does not
// read (a form or text sent to a JSON endpoint); handlers answer it with 415.
const EUNSUPPORTED = "unsupported_media_type"
