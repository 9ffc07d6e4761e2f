job "backup" {
  schedule = "0 25 * * *"
  command  = "backup.sh"
}
