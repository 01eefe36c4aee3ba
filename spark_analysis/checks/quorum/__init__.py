"""The KRaft quorum family: `checks` (`quorum.no_split_brain`, `quorum.leader_resigns`).
"""
