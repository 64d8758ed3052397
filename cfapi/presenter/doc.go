// Package presenter writes cf-hnc's objects in the shapes of the Cloud Foundry V3 API, with
// absolute links: the cf CLI follows pagination and job links verbatim.
package presenter
