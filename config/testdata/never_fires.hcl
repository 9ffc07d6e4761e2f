job "backup" {
  schedule = "0 0 30 2 *"
  command  = "backup.sh"
}
