"""What the bot survives: abuse by members, careless admins and failing machines.

Each module here holds one family of attacks or faults (paths from outside input, roles, injected
instructions, secrets, lost replies, damaged files, bad model output, bad config); every test in it
failed before the fix it guards.
"""
