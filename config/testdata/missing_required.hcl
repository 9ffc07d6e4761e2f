job "backup" {
  schedule = "@daily"
}
