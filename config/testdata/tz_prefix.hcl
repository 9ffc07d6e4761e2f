job "backup" {
  schedule = "CRON_TZ=Europe/Berlin 0 2 * * *"
  command  = "backup.sh"
}
