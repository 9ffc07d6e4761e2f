job "backup" {
  schedule = "@daily"
  command  = "backup.sh"
}

job "backup" {
  schedule = "@weekly"
  command  = "backup.sh --full"
}
