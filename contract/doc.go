// Package contract defines .bootstrap/contract.yaml: the schema (version 1), strict loading with errors that name file, line and field, and a canonical encoding whose digest identifies a contract.
package contract
