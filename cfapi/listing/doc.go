// Package listing reads the query of a Cloud Foundry list request (filters, label_selector,
// order_by, page, per_page) and applies it to the resources the user may see.
package listing
