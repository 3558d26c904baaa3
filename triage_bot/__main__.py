from triage_bot.cli.main import main

main()
