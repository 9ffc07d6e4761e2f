queue "reports" {
  concurrency = 1
}

job "backup" {
  queue    = "backups"
  schedule = "@daily"
  command  = "backup.sh"
}
