module mesh-endpoints.invalid/pause

go 1.25.0
