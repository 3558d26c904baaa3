from bot.cli.main import main

main()
