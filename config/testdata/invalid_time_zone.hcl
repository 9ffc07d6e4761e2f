job "backup" {
  schedule  = "0 2 * * *"
  time_zone = "Europe/Springfield"
  command   = "backup.sh"
}
