"""The main job (`factorspec run`) and the side-by-side benchmark (`factorspec bench`)."""
